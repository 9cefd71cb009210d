// What every release artifact is made from: the version, the time stamped into them, the
// executables of `npm run build` and the project's own files.
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "..", "..");

/** One CPU the release is made for, in the words of each format. */
export interface Arch {
  /** Node/Bun's name, used in the archives' names (`linux-x64`). */
  node: "x64" | "arm64";
  /** Debian's and OCI's name. */
  debian: "amd64" | "arm64";
  /** The executable `npm run build` wrote. */
  binary: string;
  /** Where the C and C++ runtime libraries of this CPU are on a Debian build machine. */
  libDirs: string[];
  /** The dynamic loader's path inside a root filesystem, and the multiarch folder of the libraries. */
  loader: string;
  multiarch: string;
  /** Debian packages the copied libraries come from (their copyright files go with them). */
  libPackages: string[];
}

export const ARCHES: Arch[] = [
  {
    node: "x64",
    debian: "amd64",
    binary: join(ROOT, "dist/imgpress"),
    libDirs: ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"],
    loader: "lib64/ld-linux-x86-64.so.2",
    multiarch: "x86_64-linux-gnu",
    libPackages: ["libc6", "libgcc-s1", "libstdc++6"],
  },
  {
    node: "arm64",
    debian: "arm64",
    binary: join(ROOT, "dist/imgpress-linux-arm64"),
    libDirs: ["/usr/aarch64-linux-gnu/lib"],
    loader: "lib/ld-linux-aarch64.so.1",
    multiarch: "aarch64-linux-gnu",
    libPackages: ["libc6-arm64-cross", "libgcc-s1-arm64-cross", "libstdc++6-arm64-cross"],
  },
];

/** Everything the artifacts are stamped with. */
export interface Release {
  version: string;
  /** The commit the executables were built from, as `--version` prints it after the "+". */
  commit: string;
  /** SOURCE_DATE_EPOCH, else the commit's time: every file and entry carries it, so rebuilds match. */
  epoch: number;
  description: string;
  license: string;
  /** package.json's repository URL, if it has one (the image's source label, the package's Homepage). */
  source?: string;
  maintainer: string;
  out: string;
}

const git = (args: string[]) => {
  const r = Bun.spawnSync(["git", ...args], { cwd: ROOT, stderr: "ignore" });
  return r.success ? r.stdout.toString().trim() : "";
};

/** The release as package.json and git describe it. */
export function release(out = join(ROOT, "dist/release")): Release {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    version: string;
    description: string;
    license: string;
    author?: string;
    repository?: string | { url?: string };
  };
  const repo = typeof pkg.repository === "string" ? pkg.repository : pkg.repository?.url;
  const epoch = Number(
    process.env.SOURCE_DATE_EPOCH || git(["log", "-1", "--format=%ct"]) || Math.floor(Date.now() / 1000),
  );
  return {
    version: pkg.version,
    commit: git(["describe", "--always", "--dirty", "--abbrev=10"]) || "unknown",
    epoch,
    description: pkg.description,
    license: pkg.license,
    source: repo?.replace(/^git\+/, "").replace(/\.git$/, ""),
    // Debian requires a maintainer with an address: package.json's author when it names one.
    maintainer:
      pkg.author && /<[^>]+@[^>]+>/.test(pkg.author) ? pkg.author : "imgpress maintainers <imgpress@example.org>",
    out,
  };
}

/** A file of the project, read as bytes. */
export function projectFile(path: string): Uint8Array {
  const file = join(ROOT, path);
  if (!existsSync(file)) throw new Error(`${path} is missing`);
  return readFileSync(file);
}

/** The unit of deploy/ with the executable at `exe` (its arguments kept; one ExecStart, checked). */
export function unitFile(exe: string): string {
  const unit = readFileSync(join(ROOT, "deploy/imgpress.service"), "utf8");
  const lines = unit.split("\n").filter((l) => l.startsWith("ExecStart="));
  if (lines.length !== 1) throw new Error(`deploy/imgpress.service has ${lines.length} ExecStart= lines, expected 1`);
  return unit.replace(/^ExecStart=\S+/m, `ExecStart=${exe}`);
}

/** Lowercase hex SHA-256. */
export function sha256(data: Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(data).digest("hex");
}

/** gzip without a name or time in its header (zlib writes neither), so equal input gives equal bytes. */
export function gzip(data: Uint8Array, level: 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 = 6): Uint8Array {
  return Bun.gzipSync(data as Uint8Array<ArrayBuffer>, { level });
}
