// How every browser run here starts Debian's Chromium: headless, and with the background
// networking this machine's closed network would refuse turned off. Shared by the e2e suite
// and the benchmarks so the flag list lives in one place.
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const CHROMIUM_ARGS = Object.freeze([
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
])
