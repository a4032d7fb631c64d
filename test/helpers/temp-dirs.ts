// Temp folders the tests make, removed once the whole run is over (see preload.ts).
export const tempDirsToRemove: string[] = [];
