import { readFileSync } from 'node:fs';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// One source, two builds: the default one with ai 7 and @ai-sdk/react 4,
// served at /, and `--mode ai6` with ai 6 and @ai-sdk/react 3 (npm aliases
// ai-v6 and @ai-sdk/react-v6 in the same lockfile), served at /ai6/, so
// the browser scenarios run the same page on both. Both builds are
// committed in dist/ and embedded in go run ./local.
export default defineConfig(({ mode }) => {
  const v6 = mode === 'ai6';
  const ai = JSON.parse(readFileSync(new URL(`node_modules/${v6 ? 'ai-v6' : 'ai'}/package.json`, import.meta.url)));
  return {
    base: v6 ? '/ai6/' : '/',
    plugins: [react()],
    define: { __AI_SDK_VERSION__: JSON.stringify(ai.version) },
    resolve: v6
      ? { alias: [{ find: /^ai$/, replacement: 'ai-v6' }, { find: /^@ai-sdk\/react$/, replacement: '@ai-sdk/react-v6' }] }
      : {},
    build: { outDir: v6 ? 'dist/ai6' : 'dist', emptyOutDir: true, chunkSizeWarningLimit: 1024 },
  };
});
