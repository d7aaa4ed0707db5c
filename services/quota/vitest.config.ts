export { default } from "../kit/vitest.shared.ts";
