/**
 * The Ray Jobs REST API's bodies (ray/dashboard/modules/job/common.py and pydantic_models.py, read
 * in Ray 2.58.0, commit cec0a091). Field order is Ray's, so a body the fake server writes reads
 * like the real one.
 */

/** `JobStatus` (common.py): a terminal state never changes (`put_status` raises "Attempted to change job status from a terminal state"). */
export const JOB_STATUSES = ['PENDING', 'RUNNING', 'STOPPED', 'SUCCEEDED', 'FAILED'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export function isTerminal(status: JobStatus): boolean {
  return status === 'STOPPED' || status === 'SUCCEEDED' || status === 'FAILED';
}

/** `JobErrorType` (common.py). */
export const JOB_ERROR_TYPES = [
  'RUNTIME_ENV_SETUP_FAILURE',
  'JOB_SUPERVISOR_ACTOR_START_TIMEOUT',
  'JOB_SUPERVISOR_ACTOR_START_FAILURE',
  'JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE',
  'JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE',
  'JOB_SUPERVISOR_ACTOR_DIED',
  'JOB_ENTRYPOINT_COMMAND_START_ERROR',
  'JOB_ENTRYPOINT_COMMAND_ERROR',
] as const;

/** `JobSubmitRequest` (common.py): Ray strips null keys before validating, and rejects unknown ones. */
export interface JobSubmitRequest {
  entrypoint: string;
  submission_id?: string;
  runtime_env?: Record<string, unknown>;
  /** String keys and string values only ("metadata values must be strings"). */
  metadata?: Record<string, string>;
  entrypoint_num_cpus?: number;
  entrypoint_num_gpus?: number;
  entrypoint_memory?: number;
  entrypoint_resources?: Record<string, number>;
}

export interface DriverInfo {
  id: string;
  node_ip_address: string;
  /** A string in Ray's model. */
  pid: string;
}

/** `JobDetails.dict()` (pydantic_models.py), as `GET /api/jobs/{id}` answers. */
export interface JobDetails {
  type: 'SUBMISSION' | 'DRIVER';
  job_id: string | null;
  submission_id: string | null;
  driver_info: DriverInfo | null;
  status: JobStatus;
  entrypoint: string;
  message: string | null;
  error_type: string | null;
  start_time: number | null;
  end_time: number | null;
  metadata: Record<string, string> | null;
  runtime_env: Record<string, unknown> | null;
  driver_agent_http_address: string | null;
  driver_node_id: string | null;
  driver_exit_code: number | null;
}

/** `VersionResponse` (modules/version.py). */
export interface VersionInfo {
  version: string;
  ray_version: string;
  ray_commit: string;
  session_name: string;
}
