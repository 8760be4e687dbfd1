import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, type CfnElement, Stack, Validations } from 'aws-cdk-lib';
import { Annotations, Match, type Template } from 'aws-cdk-lib/assertions';
import type * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { afterAll } from 'vitest';

/** The tiny handler every construct test bundles (bundled once per test file, then cached). */
export const FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'consumer-handler.ts');

/** Stand-ins for the example app's deployable handlers. */
export const FIXTURE_EXAMPLE_HANDLERS = path.join(__dirname, 'fixtures', 'example-handlers');

/**
 * One output directory for every app of this test process: CDK caches a bundled asset per
 * output directory, so sharing it bundles the fixture once per test file instead of once per
 * app (each bundle spawns esbuild through npx, about half a second).
 */
export const SHARED_OUTDIR = fs.mkdtempSync(path.join(os.tmpdir(), 'eo-infra-'));
afterAll(() => fs.rmSync(SHARED_OUTDIR, { recursive: true, force: true }));

/** A fresh app writing to the shared output directory, without the built-in schema validation. */
export function newApp(): App {
  return new App({ outdir: SHARED_OUTDIR, builtinCloudFormationValidation: false });
}

/**
 * A fresh app and stack. The built-in CloudFormation schema validation costs seconds per
 * process, so it is off here; one test in `cdk-nag.test.ts` runs it.
 */
export function newStack(id = 'TestStack'): { app: App; stack: Stack } {
  const app = newApp();
  const stack = new Stack(app, id, { env: { account: '123456789012', region: 'eu-west-1' } });
  return { app, stack };
}

/** The logical id of a construct's CloudFormation resource. */
export function logicalId(construct: IConstruct): string {
  const element = (construct.node.defaultChild ?? construct) as CfnElement;
  return Stack.of(construct).getLogicalId(element);
}

/**
 * Every permission of `role`'s inline policies as `Effect action resource` lines, sorted;
 * `Fn::GetAtt` renders as `LogicalId.Arn`, `Ref` as the logical id. Comparing these lists
 * asserts the exact grants, whatever way CDK groups statements.
 */
export function permissionsOf(template: Template, role: iam.IRole): string[] {
  const roleId = logicalId(role);
  const lines: string[] = [];
  for (const policy of Object.values(template.findResources('AWS::IAM::Policy'))) {
    const roles = (policy.Properties.Roles ?? []) as { Ref?: string }[];
    if (!roles.some((ref) => ref.Ref === roleId)) continue;
    for (const statement of policy.Properties.PolicyDocument.Statement) {
      for (const action of [statement.Action].flat()) {
        for (const resource of [statement.Resource].flat()) {
          lines.push(`${statement.Effect} ${action} ${renderReference(resource)}`);
        }
      }
    }
  }
  return lines.sort();
}

/** `Allow action resource` lines for each action on one resource (for `permissionsOf`). */
export function allow(actions: readonly string[], construct: IConstruct | string): string[] {
  const resource = typeof construct === 'string' ? construct : `${logicalId(construct)}.Arn`;
  return actions.map((action) => `Allow ${action} ${resource}`);
}

function renderReference(value: unknown): string {
  if (typeof value === 'string') return value;
  const object = value as Record<string, unknown>;
  const getAtt = object['Fn::GetAtt'] as [string, string] | undefined;
  if (getAtt) return `${getAtt[0]}.${getAtt[1]}`;
  if (typeof object.Ref === 'string') return object.Ref;
  return JSON.stringify(value);
}

/** A finding of a cdk-nag pack that is not acknowledged. */
export interface NagFinding {
  readonly rule: string;
  readonly severity: string;
  readonly paths: readonly string[];
}

/** Unacknowledged findings of the AwsSolutions and Serverless packs on the whole app. */
export function nagFindings(app: App): NagFinding[] {
  app.synth();
  return [new AwsSolutionsChecks(), new ServerlessChecks()].flatMap((pack) =>
    pack.validateScope(app).violations.map((violation) => ({
      rule: violation.ruleName,
      severity: violation.severity ?? 'unknown',
      paths: violation.violatingResources.map((resource) => resource.constructPath ?? '?'),
    })),
  );
}

/** Every rule acknowledged anywhere in the tree, with its reason and where. */
export function acknowledgments(root: IConstruct): { path: string; rule: string; reason: string }[] {
  return root.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([rule, reason]) => ({
          path: construct.node.path,
          rule: rule.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

/**
 * The synth-time warnings and infos of `stack` as their texts, in order, a warning's
 * acknowledgement suffix (` [ack: <id>]`) left out.
 */
export function notesOf(stack: Stack): { warnings: string[]; infos: string[] } {
  const annotations = Annotations.fromStack(stack);
  const texts = (entries: { entry: { data?: unknown } }[]) =>
    entries.map(({ entry }) => String(entry.data).replace(/ \[ack: [^\]]+\]$/, ''));
  return {
    warnings: texts(annotations.findWarning('*', Match.anyValue())),
    infos: texts(annotations.findInfo('*', Match.anyValue())),
  };
}
