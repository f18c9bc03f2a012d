// philox_kat.wgsl — test kernel: Philox4x32-10 blocks for given counters and keys, so that the
// WGSL generator (philox.wgsl, concatenated before this file) can be checked against the
// Random123 known answers and src/core/rng.ts. inp holds 6 words per case (c0 c1 c2 c3 k0 k1),
// out 4 words per case. One thread per case. Not here: sampling (sample.wgsl).

struct Params { n: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> inp: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + tid;
  if (i >= P.n) { return; }
  let b = i * 6u;
  let r = philox4x32_10(vec4u(inp[b], inp[b + 1u], inp[b + 2u], inp[b + 3u]), vec2u(inp[b + 4u], inp[b + 5u]));
  out[i * 4u] = r.x;
  out[i * 4u + 1u] = r.y;
  out[i * 4u + 2u] = r.z;
  out[i * 4u + 3u] = r.w;
}
