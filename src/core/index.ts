// The pure domain core: folds over the event log, their live gate, and inbox rules.
export * from './history-tree'
export * from './live-projection'
export * from './pending'
export * from './projection'
export * from './text-append'
export * from './transcript'
export * from './turn-outline'
export * from './usage'
