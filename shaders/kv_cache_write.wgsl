// kv_cache_write.wgsl — kCache[b, pos0 + t, :] = k[b, t, :] and the same for v (twin:
// kvCacheWrite in src/backend/cpu/attention.ts). One thread per element of k (and of v).
// Not here: the cached attention itself (attention.wgsl with the cache strides).

struct Params { n: u32, TC: u32, C: u32, Tmax: u32, pos0: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> kCache: array<f32>;
@group(0) @binding(2) var<storage, read_write> vCache: array<f32>;
@group(0) @binding(3) var<storage, read> k: array<f32>;
@group(0) @binding(4) var<storage, read> v: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + tid;
  if (i >= P.n) { return; }
  let b = i / P.TC;
  let dst = (b * P.Tmax + P.pos0) * P.C + i % P.TC;
  kCache[dst] = k[i];
  vCache[dst] = v[i];
}
