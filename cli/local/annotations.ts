/**
 * The app's synth warnings and errors (CDK `Annotations`), read from the cloud assembly a local
 * deploy synthesized, so the terminal shows them once each instead of leaving them in the CDK
 * CLI's log.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** One warning or error the app's constructs added at synth. */
export interface SynthAnnotation {
  readonly level: 'warning' | 'error';
  /** The construct path, for example `/Shop/Orders/Consumer`. */
  readonly path: string;
  readonly message: string;
}

interface MetadataEntry {
  readonly type?: string;
  readonly data?: unknown;
}

/** Metadata entries by construct path. */
export type StackMetadata = Readonly<Record<string, readonly MetadataEntry[]>>;

/** The parts of a cloud assembly's `manifest.json` this module reads. */
export interface AnnotatedManifest {
  readonly artifacts?: Readonly<
    Record<
      string,
      {
        readonly type?: string;
        readonly metadata?: StackMetadata;
        /** Where recent CDK versions write a stack's metadata instead of `metadata`. */
        readonly additionalMetadataFile?: string;
        readonly properties?: { readonly directoryName?: string };
      }
    >
  >;
}

const LEVELS: Readonly<Record<string, SynthAnnotation['level']>> = {
  'aws:cdk:warning': 'warning',
  'aws:cdk:error': 'error',
};

/** How {@link annotationsOfManifest} reads the files a manifest names. */
export interface AssemblyFiles {
  /** The annotations of a nested assembly (a stage), by its directory name. */
  readonly nested: (directoryName: string) => readonly SynthAnnotation[];
  /** A stack's `additionalMetadataFile`, by its name. */
  readonly metadataFile: (fileName: string) => StackMetadata;
}

/**
 * The warnings and errors of every stack in a parsed manifest (from its `metadata`, or its
 * `additionalMetadataFile` read with `files`, and nested assemblies), each once (the same
 * message on the same path is one annotation), errors first, then in manifest order.
 */
export function annotationsOfManifest(
  manifest: AnnotatedManifest,
  files: AssemblyFiles = { nested: () => [], metadataFile: () => ({}) },
): SynthAnnotation[] {
  const found: SynthAnnotation[] = [];
  for (const artifact of Object.values(manifest.artifacts ?? {})) {
    if (artifact.type === 'cdk:cloud-assembly' && artifact.properties?.directoryName) {
      found.push(...files.nested(artifact.properties.directoryName));
      continue;
    }
    const metadata = {
      ...artifact.metadata,
      ...(artifact.additionalMetadataFile ? files.metadataFile(artifact.additionalMetadataFile) : {}),
    };
    for (const [path, entries] of Object.entries(metadata)) {
      for (const entry of entries) {
        const level = LEVELS[entry.type ?? ''];
        if (level) found.push({ level, path, message: String(entry.data).trim() });
      }
    }
  }
  const seen = new Set<string>();
  const unique = found.filter((annotation) => {
    const key = `${annotation.level}\n${annotation.path}\n${annotation.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return [
    ...unique.filter((annotation) => annotation.level === 'error'),
    ...unique.filter((annotation) => annotation.level === 'warning'),
  ];
}

/**
 * The warnings and errors of the cloud assembly in `dir`, or none when it has no manifest or the
 * manifest is older than `since` (epoch millis: a synth that failed before writing left an older
 * assembly, whose annotations are not this run's).
 */
export function readSynthAnnotations(dir: string, since = 0): SynthAnnotation[] {
  const manifestFile = join(dir, 'manifest.json');
  try {
    if (statSync(manifestFile).mtimeMs < since) return [];
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as AnnotatedManifest;
    return annotationsOfManifest(manifest, {
      nested: (nested) => readSynthAnnotations(join(dir, nested)),
      metadataFile: (file) => readJson(join(dir, file)) as StackMetadata,
    });
  } catch {
    return [];
  }
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
}

/** One annotation as the CDK CLI prints it: `[Warning at /Shop/Orders] message`. */
export function formatAnnotation(annotation: SynthAnnotation): string {
  const level = annotation.level === 'error' ? 'Error' : 'Warning';
  return `[${level} at ${annotation.path}] ${annotation.message}`;
}
