/**
 * The model engine's public API: backend selection, tokenizer, the GPT policy, sampling and
 * resumable decoding, optimizer, supervised warm-start step and checkpoints.
 */
export { canReadSync, takeAsync } from './readback';
export { initBackend, currentBackendInfo, takeGpuFault, adapterLabel, type GpuAdapterSummary, type BackendInfo, type BackendPreference, type SkippedBackend } from './backend';
export { doctorReport, formatDoctorReport, memoryReport, type DoctorReport } from './doctor';
export { registerMissingGradients, GRADIENT_KERNELS } from './gradients';
export { Tokenizer, DEFAULT_CHARSET, DEFAULT_SPECIALS, PAD, BOS, EOS, ROLE_TOKENS, type TokenizerJSON } from './tokenizer';
export type { PolicyModel, PolicyTokenizer, DecodeCache, ChatMessage, ModelFamily } from './policy-model';
export { GPT, createModel, paramSpecs, validateConfig, type GPTConfig, type ParamSpec, type CreateModelOptions, type KVCache } from './gpt';
export { strategyForBackend, WASM_STRATEGY, PLAIN_STRATEGY, type KernelStrategy } from './ops';
export {
  sample,
  sampleAsync,
  startDecode,
  decodeSegment,
  decodeSegmentAsync,
  disposeDecodeState,
  releaseDecodeCache,
  sampleFromLogits,
  type SampleOptions,
  type SampledSequence,
  type DecodeState,
  type DecodeSequenceState,
  type StopReason,
} from './sampling';
export { Adam, createOptimizer, scheduledLr, adamModeForBackend, type AdamMode, type AdamState, type AdamParam, type LrSchedule, type StepResult } from './optim';
export { supervisedStep, supervisedStepAsync, supervisedLoss, type SupervisedBatch, type SupervisedStepResult } from './train';
export { saveCheckpoint, loadCheckpoint, readCheckpointManifest, CHECKPOINT_MANIFEST, type CheckpointManifest, type SaveCheckpointArgs, type LoadedCheckpoint } from './checkpoint';
