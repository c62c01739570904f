// Types for entries.mjs, which stays plain JavaScript so that the build needs only esbuild and node.
export declare const SOURCE_DIRS: string[];
export declare const SOURCE_FILES: string[];
