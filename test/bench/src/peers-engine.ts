/**
 * (10) The worker's half of sessionline's side: a new engine on the peers' database, served on a
 * port the page hands over (as `exposeEngine` serves an app's engine), and stopped on request.
 */
import type { Engine } from '../../../src/engine/types'
import { exposeEngine } from '../../../worker/index'
import { type BenchEnv, freshEngine, openEngine } from './env'
import { PEER_DB } from './peers-workload'

let served: Engine | undefined

/** Serves a new engine on `port` (the database emptied first when `fresh`). */
export async function servePeerEngine(env: BenchEnv, port: MessagePort, fresh: boolean): Promise<void> {
  await stopPeerEngine()
  const engine = fresh ? await freshEngine(env, PEER_DB.sessionline) : openEngine(env, PEER_DB.sessionline)
  served = exposeEngine(engine, port)
}

export async function stopPeerEngine(): Promise<void> {
  const engine = served
  served = undefined
  await engine?.close()
}
