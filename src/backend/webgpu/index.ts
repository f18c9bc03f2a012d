/**
 * The WebGPU kernels, re-exported: each wrapper takes the GpuContext first, then the CPU twin's
 * arguments in the CPU twin's order (src/backend/cpu/*), and records one or more dispatches.
 *
 * `webgpuBackend(ctx)` (backend.ts) binds them all to the `Backend` interface; `GpuTensors` is its
 * handle map.
 *
 * Not here: any kernel or dispatch logic (one file per op), choosing CPU or WebGPU (the app).
 */
export * from './device';
export * from './kernel';
export * from './logsoftmax';
export * from './gather';
export * from './cross_entropy';
export * from './kl';
export * from './adamw';
export * from './matmul';
export * from './matmul_q';
export * from './matvec';
export * from './sample';
export * from './clipped_loss';
export * from './embedding';
export * from './rmsnorm';
export * from './rope';
export * from './attention';
export * from './residual';
export * from './mlp';
export * from './backend';
