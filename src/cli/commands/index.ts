import type { CommandSpec } from "../command.js";
import { busCommand } from "./busCommand.js";
import { cacheClearCommand, cacheCompactCommand, cacheExportCommand, cacheImportCommand, cacheVerifyCommand } from "./cacheCommands.js";
import { callCommand } from "./callCommand.js";
import { daemonCommand, daemonStartCommand, daemonStatusCommand, daemonStopCommand } from "./daemonCommand.js";
import { recordCommand } from "./recordCommand.js";
import { renderCommand } from "./renderCommand.js";
import { searchCommand } from "./searchCommand.js";
import { serveCommand } from "./serveCommand.js";
import { serversCommand } from "./serversCommand.js";
import { summarizeStatusCommand, summarizeWarmCommand } from "./summarizeCommands.js";
import { toolsCommand } from "./toolsCommand.js";

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  serveCommand,
  summarizeWarmCommand,
  summarizeStatusCommand,
  renderCommand,
  serversCommand,
  toolsCommand,
  searchCommand,
  recordCommand,
  callCommand,
  cacheVerifyCommand,
  cacheCompactCommand,
  cacheClearCommand,
  cacheExportCommand,
  cacheImportCommand,
  daemonCommand, daemonStartCommand, daemonStopCommand, daemonStatusCommand,
  busCommand,
];
