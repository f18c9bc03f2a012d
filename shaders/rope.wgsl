// rope.wgsl — rotary position embedding on interleaved pairs (twins: ropeForward / ropeBackward in
// src/backend/cpu/rope.ts), with (cos φ, sin φ) read from the CPU's ropeTable, uploaded once:
//   forward (BACKWARD = 0, overwrites):  (y0, y1)  = (x0 cos − x1 sin,  x0 sin + x1 cos)
//   backward (BACKWARD = 1, accumulates): (dx0, dx1) += (d0 cos + d1 sin,  d1 cos − d0 sin)
// One thread per pair (b, t, h, i); pos = pos0 + t.
// Not here: in place (WebGPU cannot bind one buffer twice when one is written: the wrapper
// copies the input first), partial rotary, NTK/YaRN scaling.

struct Params { pairs: u32, T: u32, NH: u32, half: u32, pos0: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> inp: array<f32>;
@group(0) @binding(3) var<storage, read> tab: array<f32>;

override WG: u32 = 64u;
override BACKWARD: u32 = 0u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let p = (wid.x + wid.y * nwg.x) * WG + tid;
  if (p >= P.pairs) { return; }
  let i = p % P.half;
  let bth = p / P.half;              // (b·T + t)·NH + h
  let t = (bth / P.NH) % P.T;
  let e = 2u * p;                    // = (b·T + t)·C + h·HS + 2i, as HS = 2·half
  let ti = ((P.pos0 + t) * P.half + i) * 2u;
  let cs = tab[ti];
  let sn = tab[ti + 1u];
  let x0 = inp[e];
  let x1 = inp[e + 1u];
  if (BACKWARD == 0u) {
    out[e] = x0 * cs - x1 * sn;
    out[e + 1u] = x0 * sn + x1 * cs;
  } else {
    out[e] = out[e] + (x0 * cs + x1 * sn);
    out[e + 1u] = out[e + 1u] + (x1 * cs - x0 * sn);
  }
}
