// Files imported `with { type: "text" }` are their text, and `with { type: "file" }` their path (inside the executable once compiled): strings either way, embedded at build time.
declare module "*.sql" {
  const text: string;
  export default text;
}
declare module "*.css" {
  const text: string;
  export default text;
}
declare module "*/swagger-ui-bundle.js" {
  const text: string;
  export default text;
}
declare module "*/htmx.min.js" {
  const text: string;
  export default text;
}
declare module "*/assets/app.js" {
  const text: string;
  export default text;
}
