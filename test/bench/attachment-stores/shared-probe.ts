/**
 * The same probes in a SharedWorker, where sessionline's engine lives in shared mode
 * (docs/decisions/0035): the sync access handle is specified for dedicated workers only.
 */
import { detectFeatures } from './features'

const scope = self as unknown as { onconnect: ((event: MessageEvent) => void) | null }
scope.onconnect = (event) => {
  const port = event.ports[0]!
  detectFeatures().then(
    (features) => port.postMessage({ ok: true, value: features }),
    (error: unknown) => port.postMessage({ ok: false, error: String(error) }),
  )
}
