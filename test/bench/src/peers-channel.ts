/**
 * (11) sessionline's side in one process (Node mode and the bench check): the peers' engine
 * served on one end of a MessageChannel, a `connect()` client on the other.
 */
import { connect } from '../../../src/index'
import type { BenchEnv } from './env'
import { servePeerEngine, stopPeerEngine } from './peers-engine'
import type { ConnectEngine } from './peers-sessionline'

export function channelEngine(env: BenchEnv): ConnectEngine {
  return async (fresh) => {
    const channel = new MessageChannel()
    await servePeerEngine(env, channel.port1, fresh)
    const client = connect(channel.port2)
    return {
      client,
      async close() {
        await client.close()
        await stopPeerEngine()
        channel.port1.close()
        channel.port2.close()
      },
    }
  }
}
