import { describe, expect, it } from 'vitest';
import { runWithDependencies } from '../../../lambda/core/scheduler';

/** Lets every pending continuation run. */
async function flushMicrotasks(): Promise<void> {
  for (let turn = 0; turn < 10; turn++) await Promise.resolve();
}

/** Tasks that record their start and finish when the test says so. */
function controlledTasks() {
  const started: number[] = [];
  const finishers: (() => void)[] = [];
  const run = (index: number): Promise<void> => {
    started.push(index);
    return new Promise((resolve) => {
      finishers[index] = resolve;
    });
  };
  /** Finishes task `index` and lets every continuation it releases run. */
  const finish = async (index: number): Promise<void> => {
    finishers[index]!();
    await flushMicrotasks();
  };
  return { started, run, finish };
}

describe('runWithDependencies', () => {
  it('starts no task inside the call, then the tasks with nothing to wait for together, lowest index first, up to the concurrency', async () => {
    const tasks = controlledTasks();

    void runWithDependencies([[], [], []], 2, tasks.run);
    const startedInsideTheCall = [...tasks.started];
    await Promise.resolve();

    // One turn of the microtask queue for the batch, not one or two per task.
    expect({ startedInsideTheCall, startedOnTheNextTurn: tasks.started }).toEqual({
      startedInsideTheCall: [],
      startedOnTheNextTurn: [0, 1],
    });
  });

  it('passes a freed slot to the next waiting task, in index order', async () => {
    const tasks = controlledTasks();
    const done = runWithDependencies([[], [], [], []], 2, tasks.run);
    await flushMicrotasks();

    await tasks.finish(1);
    expect(tasks.started).toEqual([0, 1, 2]);
    await tasks.finish(0);
    expect(tasks.started).toEqual([0, 1, 2, 3]);
    await tasks.finish(2);
    await tasks.finish(3);
    await done;
  });

  it('starts a task only once every task it depends on has finished', async () => {
    const tasks = controlledTasks();
    const done = runWithDependencies([[], [], [0, 1]], 3, tasks.run);
    await flushMicrotasks();

    expect(tasks.started).toEqual([0, 1]);
    await tasks.finish(0);
    expect(tasks.started).toEqual([0, 1]);
    await tasks.finish(1);
    expect(tasks.started).toEqual([0, 1, 2]);
    await tasks.finish(2);
    await done;
  });

  it('gives a task that waits for a dependency no slot until it can start', async () => {
    const tasks = controlledTasks();
    // Task 1 waits for task 0; task 2 takes the second slot meanwhile.
    const done = runWithDependencies([[], [0], []], 2, tasks.run);
    await flushMicrotasks();

    expect(tasks.started).toEqual([0, 2]);
    await tasks.finish(0);
    expect(tasks.started).toEqual([0, 2, 1]);
    await tasks.finish(1);
    await tasks.finish(2);
    await done;
  });
});
