// The portal's build: a static bundle under /portal/, served by the API (plugins/portal.ts).
import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';

export default defineConfig({
  base: '/portal/',
  plugins: [preact()],
  build: { outDir: 'dist', emptyOutDir: true },
});
