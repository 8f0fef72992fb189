// What the AG-UI peer scripts share besides the SSE reader: a check that ends the script with
// its reason, and a subscriber that validates every event against @ag-ui/core's schema.
import { EventSchema } from "@ag-ui/core/schemas";

/** A check that, when its condition fails, prints `FAILED (label): message` (or
 * `FAILED: message` without a label) and the detail, and exits 1. */
export function checker(label) {
  return function check(condition, message, detail) {
    if (!condition) {
      console.error(label ? `FAILED (${label}): ${message}` : `FAILED: ${message}`);
      if (detail !== undefined) console.error(JSON.stringify(detail, null, 2));
      process.exit(1);
    }
  };
}

/** A subscriber that validates every event against @ag-ui/core's schema (failing `check`
 * otherwise) and records it. */
export function recorder(check) {
  const events = [];
  return {
    events,
    subscriber: {
      onEvent({ event }) {
        const parsed = EventSchema.safeParse(event);
        check(parsed.success, `event ${event.type} does not match @ag-ui/core's schema`, {
          event,
          issues: parsed.error?.issues,
        });
        events.push(event);
      },
    },
  };
}
