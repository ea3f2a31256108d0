// The class moved to the logging layer, where every front end can use it; kept here for imports.
export { RateLimitedLog } from "../log/rateLimitedLog.js";
