import { describe, expect, it } from 'vitest';
import { assertEsbuildInstalled, ESBUILD_MISSING_MESSAGE, isEsbuildInstalled } from '../../lib/esbuild-check';

describe('the esbuild check before bundling', () => {
  it('fails the synth with the install command when bundling is required and no esbuild is found', () => {
    expect(() => assertEsbuildInstalled('Stack/Consumer', true, () => false)).toThrow(
      `[Stack/Consumer] ${ESBUILD_MISSING_MESSAGE}`,
    );
    expect(ESBUILD_MISSING_MESSAGE).toContain('npm install --save-dev esbuild');
  });

  it('lets a synth that bundles nothing through without esbuild', () => {
    expect(() => assertEsbuildInstalled('Stack/Consumer', false, () => false)).not.toThrow();
  });

  it('finds the esbuild this repository installs', () => {
    expect(isEsbuildInstalled()).toBe(true);
    expect(() => assertEsbuildInstalled('Stack/Consumer', true)).not.toThrow();
  });
});
