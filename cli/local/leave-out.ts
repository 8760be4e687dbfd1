/**
 * What a local deploy leaves out of the synthesized templates because the emulator's
 * CloudFormation rejects it, so a stack with default props deploys locally without teaching it
 * about the emulator. Pure template editing here; `deploy.ts` applies it to the cloud assembly
 * between `cdk synth` and `cdk deploy`, and says once what it left out.
 *
 * Measured on MiniStack 1.5.33: an `AWS::CloudWatch::Alarm` with `Metrics` (metric math) fails
 * its stack (`Properties.Metrics (metric math) is not supported`). Whatever refers to a left-out
 * resource (a dashboard's alarm widget, a composite alarm, another alarm's action) cannot deploy
 * without it, so it is left out too, and outputs that refer to one are dropped.
 */

import { type CloudFormationResource, constructPath } from './fixup-plan';

/** The parts of a template this module reads and edits. */
export interface EditableTemplate {
  readonly Resources?: Readonly<Record<string, CloudFormationResource & { readonly DependsOn?: unknown }>>;
  readonly Outputs?: Readonly<Record<string, unknown>>;
}

/** Why a resource was left out. */
export type LeftOutReason = 'metric-math-alarm' | 'refers-to-left-out';

/** One resource left out of a local deploy. */
export interface LeftOutResource {
  readonly logicalId: string;
  /** The construct path (`aws:cdk:path` without `/Resource`), or the logical id outside CDK. */
  readonly path: string;
  readonly type: string;
  readonly reason: LeftOutReason;
}

/** A template as the emulator can deploy it, and what was taken out of it. */
export interface LocalTemplate {
  readonly template: EditableTemplate;
  readonly resources: readonly LeftOutResource[];
  /** Output names dropped because they refer to a left-out resource. */
  readonly outputs: readonly string[];
}

/**
 * The template without what the emulator rejects (metric-math alarms), what refers to that
 * (transitively), and outputs that refer to it; `DependsOn` entries naming a left-out resource
 * are dropped from the resources that stay. The input is not changed.
 */
export function leaveOutForEmulator(template: EditableTemplate): LocalTemplate {
  const resources = template.Resources ?? {};
  const reasons = new Map<string, LeftOutReason>();
  for (const [logicalId, resource] of Object.entries(resources)) {
    if (isMetricMathAlarm(resource)) reasons.set(logicalId, 'metric-math-alarm');
  }
  if (reasons.size === 0) return { template, resources: [], outputs: [] };

  for (let grew = true; grew; ) {
    grew = false;
    for (const [logicalId, resource] of Object.entries(resources)) {
      if (reasons.has(logicalId)) continue;
      if (refersToAny(resource.Properties, reasons)) {
        reasons.set(logicalId, 'refers-to-left-out');
        grew = true;
      }
    }
  }

  const kept: Record<string, unknown> = {};
  for (const [logicalId, resource] of Object.entries(resources)) {
    if (!reasons.has(logicalId)) kept[logicalId] = withoutDependencies(resource, reasons);
  }
  const keptOutputs: Record<string, unknown> = {};
  const droppedOutputs: string[] = [];
  for (const [name, output] of Object.entries(template.Outputs ?? {})) {
    if (refersToAny(output, reasons)) droppedOutputs.push(name);
    else keptOutputs[name] = output;
  }
  return {
    template: {
      ...template,
      Resources: kept as EditableTemplate['Resources'],
      ...(template.Outputs ? { Outputs: keptOutputs } : {}),
    },
    resources: [...reasons].map(([logicalId, reason]) => {
      const resource = resources[logicalId] as CloudFormationResource;
      return { logicalId, path: constructPath(logicalId, resource), type: resource.Type, reason };
    }),
    outputs: droppedOutputs,
  };
}

/**
 * One line for the terminal naming everything left out, or `undefined` when nothing was, for
 * example: `Left out locally: 2 metric-math alarms the emulator rejects (Shop/Orders/DuplicateRateAlarm,
 * Shop/Events/FailedPublishAlarm); they deploy on AWS.`
 */
export function describeLeftOut(results: readonly LocalTemplate[]): string | undefined {
  const resources = results.flatMap((result) => result.resources);
  const outputs = results.flatMap((result) => result.outputs);
  const alarms = resources.filter((resource) => resource.reason === 'metric-math-alarm');
  if (alarms.length === 0) return undefined;
  const dependents = resources.filter((resource) => resource.reason === 'refers-to-left-out');
  const names = (items: readonly LeftOutResource[]) => items.map((item) => item.path).join(', ');
  const parts = [
    `${count(alarms.length, 'metric-math alarm')} the emulator rejects (${names(alarms)})`,
    ...(dependents.length > 0 ? [`what refers to them (${names(dependents)})`] : []),
    ...(outputs.length > 0 ? [`${count(outputs.length, 'output')} naming them (${outputs.join(', ')})`] : []),
  ];
  const list = parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}` : parts[0];
  return `Left out locally: ${list}; they deploy on AWS.`;
}

function isMetricMathAlarm(resource: CloudFormationResource): boolean {
  return resource.Type === 'AWS::CloudWatch::Alarm' && resource.Properties?.Metrics !== undefined;
}

/** Whether `value` holds a `Ref`, `Fn::GetAtt` or `Fn::Sub` reference to one of `ids`. */
function refersToAny(value: unknown, ids: ReadonlyMap<string, unknown>): boolean {
  if (Array.isArray(value)) return value.some((item) => refersToAny(item, ids));
  if (value === null || typeof value !== 'object') return false;
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'Ref' && typeof inner === 'string' && ids.has(inner)) return true;
    if (key === 'Fn::GetAtt' && ids.has(getAttTarget(inner))) return true;
    if (key === 'Fn::Sub' && subReferences(inner).some((id) => ids.has(id))) return true;
    if (refersToAny(inner, ids)) return true;
  }
  return false;
}

function getAttTarget(value: unknown): string {
  if (Array.isArray(value)) return typeof value[0] === 'string' ? value[0] : '';
  return typeof value === 'string' ? (value.split('.')[0] ?? '') : '';
}

/** The logical ids a `Fn::Sub` string names as `${Id}` or `${Id.Attribute}` (not its own variables). */
function subReferences(value: unknown): string[] {
  const [text, variables] = Array.isArray(value) ? value : [value, {}];
  if (typeof text !== 'string') return [];
  const own = new Set(Object.keys((variables as Record<string, unknown> | undefined) ?? {}));
  return [...text.matchAll(/\$\{([^!}][^}]*)\}/g)]
    .map((match) => (match[1] ?? '').split('.')[0] ?? '')
    .filter((id) => !own.has(id));
}

function withoutDependencies(
  resource: CloudFormationResource & { readonly DependsOn?: unknown },
  leftOut: ReadonlyMap<string, unknown>,
): unknown {
  const { DependsOn: dependsOn } = resource;
  if (dependsOn === undefined) return resource;
  const names = (Array.isArray(dependsOn) ? dependsOn : [dependsOn]).filter(
    (name) => !(typeof name === 'string' && leftOut.has(name)),
  );
  const { DependsOn: _dropped, ...rest } = resource;
  return names.length > 0 ? { ...rest, DependsOn: names } : rest;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
