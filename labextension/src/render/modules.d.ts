/** plotly.js's prebuilt bundles ship no type declarations. */
declare module 'plotly.js-cartesian-dist-min';
