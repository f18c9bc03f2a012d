/**
 * The errors an agent worker can raise besides the core's (src/core/errors.ts), in a module of
 * their own so the main thread can recognise them without bundling the worker's code (AgentApi
 * pulls in the model, the kernels and the shaders).
 *
 * Not here: how errors cross the boundary (wire.ts) or the agent (agentApi.ts).
 */
import { SatError } from '../core/errors';

/** A worker-side failure the user can act on (not initialised, wrong kind, the worker died). */
export class AgentWorkerError extends SatError {
  constructor(message: string) {
    super('worker', message);
    this.name = 'AgentWorkerError';
  }
}

/** The agent's GPU device is gone (driver reset, `device.destroy()`, …): every later call says so. */
export class DeviceLostError extends SatError {
  constructor(message: string) {
    super('device-lost', message);
    this.name = 'DeviceLostError';
  }
}
