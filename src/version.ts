import pkg from "../package.json" with { type: "json" };

/** The release version, from package.json. */
export const version: string = pkg.version;
