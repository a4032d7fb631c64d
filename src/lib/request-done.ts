// What the pipeline tells of every answered request (src/http/foundation.ts); a file of its own so
// the logger and the metrics can name it without importing the pipeline.

/** One request answered: what the access log and the HTTP metrics are made of. */
export interface RequestDone {
  method: string;
  /** The route's pattern (`/v1/api/notification/:id`), never the raw path; "unmatched" when no route matched. */
  route: string;
  status: number;
  durationMs: number;
  requestId: string;
}
