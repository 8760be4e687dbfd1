/**
 * Runs the records of a batch with bounded concurrency while respecting dependencies (the
 * previous record of the same FIFO group, the previous record with the same scoped key).
 */

/**
 * Runs `run(index)` for every task, at most `concurrency` at a time, each only after the tasks
 * listed in `dependencies[index]` have finished. Ready tasks start lowest index first.
 *
 * Dependencies must point to lower indices. Then the lowest unstarted task only waits for tasks
 * that have started, so a full set of running tasks always finishes and nothing deadlocks.
 * `run` must not reject; if it does, the returned promise rejects.
 */
export function runWithDependencies(
  dependencies: readonly (readonly number[])[],
  concurrency: number,
  run: (index: number) => Promise<void>,
): Promise<void> {
  const count = dependencies.length;
  const waitingOn = dependencies.map((list) => list.length);
  const dependents: number[][] = dependencies.map(() => []);
  dependencies.forEach((list, index) => {
    for (const dependency of list) dependents[dependency]!.push(index);
  });
  const ready = createMinHeap();
  waitingOn.forEach((waiting, index) => {
    if (waiting === 0) ready.push(index);
  });

  return new Promise((resolve, reject) => {
    let running = 0;
    let finished = 0;
    const pump = (): void => {
      while (running < concurrency && ready.size() > 0) {
        const index = ready.pop();
        running += 1;
        run(index).then(() => {
          running -= 1;
          finished += 1;
          for (const dependent of dependents[index]!) {
            waitingOn[dependent]! -= 1;
            if (waitingOn[dependent] === 0) ready.push(dependent);
          }
          if (finished === count) resolve();
          else pump();
        }, reject);
      }
    };
    if (count === 0) resolve();
    else pump();
  });
}

interface MinHeap {
  push(value: number): void;
  pop(): number;
  size(): number;
}

function createMinHeap(): MinHeap {
  const heap: number[] = [];
  const swap = (a: number, b: number): void => {
    const value = heap[a]!;
    heap[a] = heap[b]!;
    heap[b] = value;
  };
  return {
    size: () => heap.length,
    push(value) {
      heap.push(value);
      let child = heap.length - 1;
      while (child > 0) {
        const parent = (child - 1) >> 1;
        if (heap[parent]! <= heap[child]!) break;
        swap(parent, child);
        child = parent;
      }
    },
    pop() {
      const top = heap[0]!;
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        let parent = 0;
        for (;;) {
          const left = parent * 2 + 1;
          const right = left + 1;
          let smallest = parent;
          if (left < heap.length && heap[left]! < heap[smallest]!) smallest = left;
          if (right < heap.length && heap[right]! < heap[smallest]!) smallest = right;
          if (smallest === parent) break;
          swap(parent, smallest);
          parent = smallest;
        }
      }
      return top;
    },
  };
}
