/**
 * SQLite failures a user can fix, in words that say how (issue #17): a full disk and a database
 * another process holds locked. Other errors are left as they are.
 */
export function describeStoreFailure(error: unknown, databasePath: string): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  const errno = (error as NodeJS.ErrnoException | null)?.code;
  if (code === 'SQLITE_FULL' || errno === 'ENOSPC') {
    return `the disk holding ${databasePath} is full (${(error as Error).message}); nothing already written is lost: free some space, then continue with \`marsrl resume RUN\` (or start the command again)`;
  }
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return `the database ${databasePath} is locked by another process (${(error as Error).message}, after waiting for it); close the other program that holds it open for writing (a sqlite3 shell, a backup tool), then try again`;
  }
  return null;
}
