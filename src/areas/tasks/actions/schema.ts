import { z } from 'zod';

/** `POST .../tasks/{tid}/action` body; the name is checked against the action table after (400 UNKNOWN_ACTION). */
export const actionBody = z.strictObject({ action: z.string().min(1).max(100) });
