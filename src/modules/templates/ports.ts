// What other modules and the channels may use of the templates module's storage: narrow views of its
// repositories, each naming only the methods used outside the module. The repositories stay private.
import type { TemplateRepository } from "./repository";

export type TemplateStore = Pick<TemplateRepository, "byCode" | "byId" | "byIds" | "get" | "insert" | "update" | "visibleByCode">;
