/**
 * The double-tap test helper and its building blocks, for users' own test suites.
 *
 * @module effectively-once/replay
 */

export type { ChangeKind, Difference } from './diff';
export { diffSnapshots } from './diff';
export type { DoubleTapOptions, DoubleTapResult, DrainContext } from './double-tap';
export { doubleTap } from './double-tap';
export type { QueueCounters } from './drain';
export type { ReplayErrorCode } from './errors';
export { isReplayError, ReplayError } from './errors';
export type { FormatOptions, ReplaySummary } from './format';
export { formatDifferences, formatJsonReport, formatValue, formatVerdict } from './format';
export type { LogEntry, LogMessage } from './log';
export { parseLog, toLogEntries } from './log';
export type { Pass, ProgressEvent } from './progress';
export type { Item, TableSnapshot } from './snapshot';
export { createTableSnapshot } from './snapshot';
