import react from '@vitejs/plugin-react'
import { defineConfig } from 'vite'

export default defineConfig({
  plugins: [react()],
  // sessionline's worker is an ES module that imports its chunks.
  worker: { format: 'es' },
  // Pre-bundling would move the package's worker module and break its URL (dev server).
  optimizeDeps: { exclude: ['sessionline'] },
})
