/**
 * Reads the stacks of a synthesized cloud assembly (`cdk.out*`): names, template files and
 * dependencies, including stacks of nested assemblies (CDK stages).
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type CloudFormationTemplate, constructPath } from './fixup-plan';

/** One CloudFormation stack of a cloud assembly. */
export interface AssemblyStack {
  /** Artifact id in the manifest, for example `DeployFixture`. */
  readonly artifactId: string;
  /** What `cdk` prints and selects by, for example `Stage/DeployFixture`. */
  readonly displayName: string;
  /** The deployed stack's name. */
  readonly stackName: string;
  /** Absolute path of the synthesized template. */
  readonly templateFile: string;
  /** Artifact ids of the stacks this one depends on. */
  readonly dependencies: readonly string[];
}

interface ManifestArtifact {
  readonly type?: string;
  readonly displayName?: string;
  readonly dependencies?: readonly string[];
  readonly properties?: {
    readonly templateFile?: string;
    readonly stackName?: string;
    readonly directoryName?: string;
  };
}

/** The parts of `manifest.json` this module reads. */
export interface AssemblyManifest {
  readonly artifacts?: Readonly<Record<string, ManifestArtifact>>;
}

/**
 * The stacks of the cloud assembly in `dir`, nested assemblies included, in manifest order.
 *
 * @throws Error when `dir/manifest.json` is missing or unreadable.
 */
export function readAssemblyStacks(dir: string): AssemblyStack[] {
  const root = resolve(dir);
  const manifestFile = join(root, 'manifest.json');
  let manifest: AssemblyManifest;
  try {
    manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as AssemblyManifest;
  } catch (error) {
    throw new Error(`Cannot read the cloud assembly manifest ${manifestFile}: ${(error as Error).message}`);
  }
  return stacksOfManifest(manifest, root, readAssemblyStacks);
}

/**
 * The stacks a parsed manifest lists, with template paths resolved against `dir`. Nested
 * assemblies are read with `readNested` (their own `manifest.json`).
 */
export function stacksOfManifest(
  manifest: AssemblyManifest,
  dir: string,
  readNested: (dir: string) => AssemblyStack[] = () => [],
): AssemblyStack[] {
  const stacks: AssemblyStack[] = [];
  for (const [artifactId, artifact] of Object.entries(manifest.artifacts ?? {})) {
    const properties = artifact.properties ?? {};
    if (artifact.type === 'aws:cloudformation:stack' && properties.templateFile) {
      stacks.push({
        artifactId,
        displayName: artifact.displayName ?? artifactId,
        stackName: properties.stackName ?? artifactId,
        templateFile: join(dir, properties.templateFile),
        dependencies: (artifact.dependencies ?? []).filter(
          (id) => manifest.artifacts?.[id]?.type === 'aws:cloudformation:stack',
        ),
      });
    } else if (artifact.type === 'cdk:cloud-assembly' && properties.directoryName) {
      stacks.push(...readNested(join(dir, properties.directoryName)));
    }
  }
  return stacks;
}

/**
 * The stacks whose display name, artifact id or stack name matches one of `patterns` (`*` matches
 * any characters, as in `cdk deploy 'Stage/*'`), or all stacks when `patterns` is empty.
 */
export function selectStacks(stacks: readonly AssemblyStack[], patterns: readonly string[]): AssemblyStack[] {
  if (patterns.length === 0) return [...stacks];
  const matchers = patterns.map(globToRegExp);
  return stacks.filter((stack) =>
    matchers.some((matcher) =>
      [stack.displayName, stack.artifactId, stack.stackName].some((name) => matcher.test(name)),
    ),
  );
}

/** Orders stacks so that each comes before the stacks it depends on (the order to delete them in). */
export function deletionOrder(stacks: readonly AssemblyStack[]): AssemblyStack[] {
  const byId = new Map(stacks.map((stack) => [stack.artifactId, stack]));
  const visited = new Set<string>();
  const deployOrder: AssemblyStack[] = [];
  const visit = (stack: AssemblyStack) => {
    if (visited.has(stack.artifactId)) return;
    visited.add(stack.artifactId);
    for (const id of stack.dependencies) {
      const dependency = byId.get(id);
      if (dependency) visit(dependency);
    }
    deployOrder.push(stack);
  };
  for (const stack of stacks) visit(stack);
  return deployOrder.reverse();
}

/** Reads and parses a stack's template. */
export function readTemplate(stack: Pick<AssemblyStack, 'templateFile'>): CloudFormationTemplate {
  return JSON.parse(readFileSync(stack.templateFile, 'utf8')) as CloudFormationTemplate;
}

/** A resource that outlives its stack's deletion. */
export interface RetainedResource {
  /** The construct path, or the logical id outside CDK. */
  readonly path: string;
  readonly type: string;
}

/** The resources of a template whose `DeletionPolicy` keeps them when the stack is deleted. */
export function retainedResources(template: CloudFormationTemplate): RetainedResource[] {
  return Object.entries(template.Resources ?? {}).flatMap(([logicalId, resource]) => {
    const policy = resource.DeletionPolicy;
    return policy === 'Retain' || policy === 'RetainExceptOnCreate'
      ? [{ path: constructPath(logicalId, resource), type: resource.Type }]
      : [];
  });
}

function globToRegExp(pattern: string): RegExp {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${escaped}$`);
}
