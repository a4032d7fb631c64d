// What other modules and the channels may use of the devices module's storage: narrow views of its
// repositories, each naming only the methods used outside the module. The repositories stay private.
import type { DeviceRepository } from "./repository";

export type DeviceStore = Pick<DeviceRepository, "all" | "byId" | "byIds" | "everById" | "get" | "insertMany" | "touch" | "update">;
