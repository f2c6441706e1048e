import type { StorybookConfig } from '@storybook/react-vite'

/**
 * Storybook for the playground's parts and the React adapters. Every story gets its own
 * IndexedDB database and scripted model (stories/support/story-session.ts).
 */
const config: StorybookConfig = {
  framework: { name: '@storybook/react-vite', options: {} },
  stories: ['../stories/**/*.stories.@(ts|tsx)'],
  addons: [],
  core: { disableTelemetry: true, disableWhatsNewNotifications: true },
  typescript: { reactDocgen: false },
  async viteFinal(vite) {
    return {
      ...vite,
      // Module workers: Vite's default worker format (iife) fails the static build once a
      // worker imports code that is split into chunks.
      worker: { ...vite.worker, format: 'es' },
      // A worker shipped inside a dependency must not be pre-bundled (its `new URL(…,
      // import.meta.url)` would point into .vite/deps); this matters to apps that import the
      // published package, and costs nothing here.
      optimizeDeps: { ...vite.optimizeDeps, exclude: [...(vite.optimizeDeps?.exclude ?? []), 'sessionline'] },
      build: { ...vite.build, target: 'es2022', chunkSizeWarningLimit: 2000 },
    }
  },
}

export default config
