/// <reference types="vite/client" />
/// <reference types="vite-plugin-pwa/vanillajs" />

/** The build's name (vite.config.ts). */
declare const __DEMO_BUILD__: string
