// @ts-check
/**
 * Cleanup shared by the browser runners (`test/e2e/run.mjs`, `test/e2e/contract/run.mjs`): every
 * process a run started gets that run's temporary folder on its command line (browser profiles,
 * drivers), so killing by folder reaches the ones a crashed child left behind.
 */
import { execFileSync } from 'node:child_process'

/** SIGKILLs every process (but this one) whose command line names `dir`. */
export function killProcessesNaming(dir) {
  try {
    const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    for (const line of out.split('\n')) {
      if (!line.includes(dir)) continue
      const pid = Number.parseInt(line.trim(), 10)
      if (pid > 0 && pid !== process.pid) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {}
      }
    }
  } catch {}
}
