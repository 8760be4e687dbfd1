import { describe, expect, it } from 'vitest';
import {
  type AssemblyManifest,
  type AssemblyStack,
  deletionOrder,
  selectStacks,
  stacksOfManifest,
} from '../../../../cli/local/cloud-assembly';

const manifest: AssemblyManifest = {
  artifacts: {
    'App.assets': { type: 'cdk:asset-manifest', properties: {} },
    Inbox: {
      type: 'aws:cloudformation:stack',
      displayName: 'Inbox',
      dependencies: ['App.assets'],
      properties: { templateFile: 'Inbox.template.json', stackName: 'EffectivelyOnceInbox' },
    },
    Consumer: {
      type: 'aws:cloudformation:stack',
      displayName: 'Consumer',
      dependencies: ['Inbox', 'App.assets'],
      properties: { templateFile: 'Consumer.template.json' },
    },
    Tree: { type: 'cdk:tree', properties: {} },
    assemblyStaging: { type: 'cdk:cloud-assembly', properties: { directoryName: 'assembly-Staging' } },
  },
};

const stagingStack: AssemblyStack = {
  artifactId: 'StagingApi',
  displayName: 'Staging/Api',
  stackName: 'Staging-Api',
  templateFile: '/out/assembly-Staging/StagingApi.template.json',
  dependencies: [],
};

describe('stacksOfManifest', () => {
  it('lists stack artifacts with resolved templates, stack-only dependencies and nested assemblies', () => {
    const nestedDirs: string[] = [];
    const stacks = stacksOfManifest(manifest, '/out', (dir) => {
      nestedDirs.push(dir);
      return [stagingStack];
    });
    expect(nestedDirs).toEqual(['/out/assembly-Staging']);
    expect(stacks).toEqual([
      {
        artifactId: 'Inbox',
        displayName: 'Inbox',
        stackName: 'EffectivelyOnceInbox',
        templateFile: '/out/Inbox.template.json',
        dependencies: [],
      },
      {
        artifactId: 'Consumer',
        displayName: 'Consumer',
        stackName: 'Consumer',
        templateFile: '/out/Consumer.template.json',
        dependencies: ['Inbox'],
      },
      stagingStack,
    ]);
  });
});

describe('selectStacks', () => {
  const stacks = stacksOfManifest(manifest, '/out', () => [stagingStack]);
  const names = (selected: AssemblyStack[]) => selected.map((stack) => stack.stackName);

  it('selects every stack without patterns', () => {
    expect(names(selectStacks(stacks, []))).toEqual(['EffectivelyOnceInbox', 'Consumer', 'Staging-Api']);
  });

  it('matches display names, artifact ids and stack names, with * wildcards', () => {
    expect(names(selectStacks(stacks, ['Staging/*']))).toEqual(['Staging-Api']);
    expect(names(selectStacks(stacks, ['EffectivelyOnceInbox']))).toEqual(['EffectivelyOnceInbox']);
    expect(names(selectStacks(stacks, ['Consumer', 'Inbox']))).toEqual(['EffectivelyOnceInbox', 'Consumer']);
    expect(names(selectStacks(stacks, ['Nope']))).toEqual([]);
  });

  it('treats regular expression characters in patterns literally', () => {
    expect(names(selectStacks(stacks, ['Inbo.']))).toEqual([]);
  });
});

describe('deletionOrder', () => {
  it('deletes dependents before the stacks they depend on', () => {
    const stacks = stacksOfManifest(manifest, '/out');
    expect(deletionOrder(stacks).map((stack) => stack.artifactId)).toEqual(['Consumer', 'Inbox']);
    expect(deletionOrder([...stacks].reverse()).map((stack) => stack.artifactId)).toEqual([
      'Consumer',
      'Inbox',
    ]);
  });
});
