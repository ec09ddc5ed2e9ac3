#!/usr/bin/env node
/**
 * The desktop package's icons, all made from build/icon.svg with resvg (@resvg/resvg-js):
 *   build/icons/NxN.png   the Linux icon set (electron-builder's linux.icon folder; AppImage, deb)
 *   build/icon.png        512×512, the fallback every target accepts
 *   build/icon.icns       macOS (dmg): PNG entries, Apple's icns container
 *   build/icon.ico        Windows (nsis): PNG entries, the ICO container (PNG payloads since Vista)
 * Usage: node scripts/make-icons.mjs [--out DIR]   (DIR defaults to build/; the test renders into a
 * temporary folder and compares, so the committed icons cannot drift from the SVG.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Resvg } from '@resvg/resvg-js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const LINUX_SIZES = [16, 24, 32, 48, 64, 128, 256, 512, 1024];
export const ICO_SIZES = [16, 24, 32, 48, 64, 128, 256];
/**
 * icns element types holding PNG data and their pixel size (Apple's icns format as documented
 * in the libicns / Wikipedia "Apple Icon Image format" table): the @2x types are the same pixels
 * as the next size up and are what Retina displays pick.
 */
export const ICNS_TYPES = [
  ['icp4', 16],
  ['icp5', 32],
  ['icp6', 64],
  ['ic07', 128],
  ['ic08', 256],
  ['ic09', 512],
  ['ic10', 1024],
  ['ic11', 32],
  ['ic12', 64],
  ['ic13', 256],
  ['ic14', 512],
];

export function renderPng(svg, size) {
  return Buffer.from(new Resvg(svg, { fitTo: { mode: 'width', value: size } }).render().asPng());
}

/** ICO: ICONDIR (reserved 0, type 1, count), one 16-byte ICONDIRENTRY per image, then the PNGs. */
export function ico(images) {
  const header = Buffer.alloc(6 + 16 * images.length);
  header.writeUInt16LE(0, 0);
  header.writeUInt16LE(1, 2);
  header.writeUInt16LE(images.length, 4);
  let offset = header.length;
  images.forEach(({ size, png }, i) => {
    const entry = 6 + 16 * i;
    header.writeUInt8(size >= 256 ? 0 : size, entry); // 0 means 256
    header.writeUInt8(size >= 256 ? 0 : size, entry + 1);
    header.writeUInt8(0, entry + 2); // no palette
    header.writeUInt8(0, entry + 3);
    header.writeUInt16LE(1, entry + 4); // colour planes
    header.writeUInt16LE(32, entry + 6); // bits per pixel
    header.writeUInt32LE(png.length, entry + 8);
    header.writeUInt32LE(offset, entry + 12);
    offset += png.length;
  });
  return Buffer.concat([header, ...images.map((i) => i.png)]);
}

/** icns: magic `icns` + total length (big-endian), then per element its type, length (with the 8-byte header) and data. */
export function icns(elements) {
  const parts = elements.map(({ type, png }) => {
    const head = Buffer.alloc(8);
    head.write(type, 0, 'ascii');
    head.writeUInt32BE(png.length + 8, 4);
    return Buffer.concat([head, png]);
  });
  const head = Buffer.alloc(8);
  head.write('icns', 0, 'ascii');
  head.writeUInt32BE(8 + parts.reduce((a, p) => a + p.length, 0), 4);
  return Buffer.concat([head, ...parts]);
}

export function makeIcons(outDir, svgPath = path.join(root, 'build', 'icon.svg')) {
  const svg = fs.readFileSync(svgPath);
  const cache = new Map();
  const png = (size) => {
    if (!cache.has(size)) cache.set(size, renderPng(svg, size));
    return cache.get(size);
  };
  const written = [];
  const write = (rel, data) => {
    const file = path.join(outDir, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, data);
    written.push(rel);
  };
  for (const size of LINUX_SIZES) write(path.join('icons', `${size}x${size}.png`), png(size));
  write('icon.png', png(512));
  write('icon.icns', icns(ICNS_TYPES.map(([type, size]) => ({ type, png: png(size) }))));
  write('icon.ico', ico(ICO_SIZES.map((size) => ({ size, png: png(size) }))));
  return written;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--out');
  const outDir = i > 0 ? path.resolve(process.argv[i + 1]) : path.join(root, 'build');
  for (const rel of makeIcons(outDir)) console.log(path.join(outDir, rel));
}
