export { default } from "../services/kit/vitest.shared.ts";
