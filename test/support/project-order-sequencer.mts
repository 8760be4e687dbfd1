/**
 * The order test files start in when they run side by side (`maxWorkers` in vitest.config.mts):
 * vitest's own sequencer, with its projects taken in {@link PROJECT_ORDER} instead of by name.
 *
 * By name, `reliability` started after every `infra` and `integration` file had been handed to a
 * worker, and its longest file (`fault-injection.test.ts`, 160 to 225 s) then ran alone for the
 * last 90 s of a 574 s run with a core partly idle. Started first, the shorter files fill the
 * workers around it. Within a project the order is vitest's: files that failed last time first,
 * then the longest last time, or the largest when there is no record (a fresh clone).
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Projects in the order their files start: the longest files first, the unit tests last. */
export const PROJECT_ORDER: readonly string[] = ['reliability', 'integration', 'infra', 'unit'];

/** A project's place in {@link PROJECT_ORDER}; a project not listed comes after those listed. */
export function projectRank(name: string): number {
  const rank = PROJECT_ORDER.indexOf(name);
  return rank === -1 ? PROJECT_ORDER.length : rank;
}

/** vitest's sequencer with the projects in {@link PROJECT_ORDER}. */
export default class ProjectOrderSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Array.prototype.sort is stable: within a project, vitest's order stays as it was; a
    // `sequence.groupOrder` still comes before the project (its groups run one after another).
    return sorted.sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        projectRank(a.project.name) - projectRank(b.project.name),
    );
  }
}
