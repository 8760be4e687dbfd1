/**
 * A tiny seeded PRNG (mulberry32) and stable hashing, so every random choice of the
 * reliability suite is reproducible from a seed.
 *
 * Two kinds of choices:
 * - plan choices (which messages exist, their copies, their order) come from one stream,
 *   `createRandom(seed)`, drawn in a fixed order before anything runs;
 * - fault choices are made while real requests interleave, so they must not depend on that
 *   interleaving: they come from `chanceOf(seed, ...labels)`, a pure function of the seed and
 *   of what is being decided (for example a message id and its receive count).
 */

/** A seeded stream of numbers in [0, 1) and helpers on top of it. */
export interface Random {
  /** The next number in [0, 1). */
  next(): number;
  /** An integer in [0, bound). */
  int(bound: number): number;
  /** An integer in [min, max], both included. */
  between(min: number, max: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** A shuffled copy (Fisher-Yates). */
  shuffle<T>(items: readonly T[]): T[];
}

/** mulberry32: a 32-bit state PRNG, good enough for test plans and fast. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Creates the stream of `seed`. */
export function createRandom(seed: number): Random {
  const next = mulberry32(seed);
  const int = (bound: number): number => Math.floor(next() * bound);
  return {
    next,
    int,
    between: (min, max) => min + int(max - min + 1),
    chance: (p) => next() < p,
    pick: (items) => items[int(items.length)]!,
    shuffle: (items) => {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i -= 1) {
        const j = int(i + 1);
        [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      }
      return copy;
    },
  };
}

/** FNV-1a over the labels, then one mulberry32 step: a 32-bit hash of what is decided. */
export function hashOf(...labels: readonly (string | number)[]): number {
  let hash = 0x811c9dc5;
  for (const char of labels.join('\u0000')) {
    hash ^= char.codePointAt(0)!;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** A number in [0, 1) that depends only on `seed` and `labels`, never on call order. */
export function chanceOf(seed: number, ...labels: readonly (string | number)[]): number {
  return mulberry32(hashOf(seed, ...labels))();
}
