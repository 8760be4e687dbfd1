/**
 * Runs the records of a batch with bounded concurrency while respecting dependencies (the
 * previous record of the same FIFO group, the previous record with the same scoped key).
 */

/**
 * Runs `run(index)` for every task, at most `concurrency` at a time, each only after the tasks
 * listed in `dependencies[index]` have finished. Ready tasks start in the order they became
 * ready; tasks ready from the start begin lowest index first.
 *
 * Dependencies must point to lower indices. A task takes a slot only once its dependencies
 * have finished, so a waiting task never holds a slot and nothing deadlocks. `run` must not
 * reject; if it does, the returned promise rejects.
 */
export async function runWithDependencies(
  dependencies: readonly (readonly number[])[],
  concurrency: number,
  run: (index: number) => Promise<void>,
): Promise<void> {
  const waiting: (() => void)[] = [];
  let next = 0;
  let active = 0;
  const acquire = (): Promise<void> | undefined => {
    if (active < concurrency) {
      active += 1;
      return undefined;
    }
    return new Promise((resolve) => waiting.push(resolve));
  };
  const release = (): void => {
    // The slot passes straight to the next waiting task, so `active` stays the same.
    if (next < waiting.length) waiting[next++]!();
    else active -= 1;
  };
  // No task starts inside this call: they start together on the next turn of the microtask
  // queue. After that a task awaits only a real wait (a dependency, a slot), not a turn or two of
  // the queue per message.
  await undefined;
  const releaseAndRethrow = (error: unknown): never => {
    release();
    throw error;
  };
  /** Runs a task holding a slot, and frees the slot when it settles. */
  const runInSlot = (index: number): Promise<void> => run(index).then(release, releaseAndRethrow);
  const finished: Promise<void>[] = [];
  dependencies.forEach((list, index) => {
    // A task ready from the start with a slot free (the usual case) starts here, with no wrapper.
    if (list.length === 0 && active < concurrency) {
      active += 1;
      finished[index] = runInSlot(index);
      return;
    }
    finished[index] = (async () => {
      if (list.length > 0) await Promise.all(list.map((dependency) => finished[dependency]));
      const slot = acquire();
      if (slot !== undefined) await slot;
      await runInSlot(index);
    })();
  });
  await Promise.all(finished);
}
