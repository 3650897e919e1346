import { MemoryRunLogStore } from '../../../src/infrastructure/runlog/memory-run-log-store.ts';
import { runLogStoreContract } from './run-log-store-contract.ts';

runLogStoreContract('MemoryRunLogStore', async () => new MemoryRunLogStore());
