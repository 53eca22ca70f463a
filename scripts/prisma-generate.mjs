// Runs `prisma generate` offline. Generation never uses Prisma's schema engine, but the CLI
// insists the binary exists and would download it otherwise (which this network refuses), so
// any existing file is named. See ../shared/README.md, "Facts measured on these machines".
import { spawnSync } from 'node:child_process';

const result = spawnSync('prisma', ['generate'], {
  stdio: 'inherit',
  env: {
    PRISMA_SCHEMA_ENGINE_BINARY: process.execPath,
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
    ...process.env,
  },
  shell: process.platform === 'win32',
});
process.exit(result.status ?? 1);
