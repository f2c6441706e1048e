export declare function killProcessesNaming(dir: string): void
