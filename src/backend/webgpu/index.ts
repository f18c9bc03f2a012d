/**
 * The WebGPU kernels, re-exported: each wrapper takes the GpuContext first, then the CPU twin's
 * arguments in the CPU twin's order (src/backend/cpu/*), and records one or more dispatches.
 *
 * Not here: the `Backend` object over these wrappers (part 2, with the model-layer kernels).
 */
export * from './device';
export * from './kernel';
export * from './logsoftmax';
export * from './gather';
export * from './kl';
export * from './adamw';
export * from './matmul';
export * from './matmul_q';
export * from './sample';
export * from './clipped_loss';
