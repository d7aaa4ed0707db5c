declare module "virtual:vnm-catalog" {
  const catalog: import("./model.ts").ConsoleCatalog;
  export default catalog;
}
