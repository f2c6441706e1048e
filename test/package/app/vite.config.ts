import react from '@vitejs/plugin-react'
import { defineConfig } from 'vite'

export default defineConfig({
  plugins: [react()],
  // sessionline's worker is an ES module (Vite's default worker format is a classic script).
  worker: { format: 'es' },
})
