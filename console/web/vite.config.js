import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The console is served by the Admin function at /admin/ (and by go run
// ./local there too); its build is committed in dist/ and embedded in the
// functions. The Firebase JS SDK is bundled: the page loads nothing from
// elsewhere.
export default defineConfig({
  base: '/admin/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 1024 },
});
