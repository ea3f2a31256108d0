/** Result shaping: what `result_format` and `structured` do to a tool result, and the way back. */
export {
  DEFAULT_RESULT_FORMAT,
  RESULT_FORMATS,
  STRUCTURED_MODES,
  resultFormatFor,
  type ResultFormat,
  type ResultShapeConfig,
  type StructuredMode,
} from "./resultFormat.js";
export { decodeShapedText, shapeJsonText, shapeJsonTextDetailed, SHAPE_MAX_TEXT_CHARS, type ShapedText } from "./shapeJsonText.js";
export { decodeResult, repeatsStructured, shapeResult, SHAPED_META_KEY, STRUCTURED_META_KEY, type ShapedMeta, type ShapeResultOptions } from "./shapeResult.js";
export { shapeCallResult } from "./shapeCallResult.js";
export { COLUMNS_KEY, ROWS_KEY, tableValue, untableValue } from "./jsonTable.js";
