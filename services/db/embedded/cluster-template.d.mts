// Types of cluster-template.mjs (plain JavaScript, see there).
export function clusterTemplateDir(): Promise<string>;
export function initialiseCluster(pgDir: string): Promise<void>;
export function copyClusterTemplate(pgDir: string, template?: string): Promise<boolean>;
export function createClusterTemplate(): Promise<string>;
