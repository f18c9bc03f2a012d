// attention_row.wgsl — where one row of causal multi-head attention lives in memory: a helper
// concatenated in front of attention.wgsl, attention_backward_dq.wgsl and
// attention_backward_dkv.wgsl (shaders: ['attention_row', …]), not a kernel; it needs nothing
// before it. The layout is the CPU twin's (src/backend/cpu/attention.ts), C = NH·HS:
//   row index     r = (b·NH + h)·T + t                 (rows of att / ds: [B, NH, T, L])
//   x row         (b·T + t)·C + h·HS                   (q, out, dout, dq: [B, T, C], head h)
//   key row t2    (b·kvT + t2)·C + h·HS = kv + t2·C     (k, v: [B, kvT, C]; kvT = T, or the
//                                                       cache's Tmax)
// Not here: bindings, any maths (the kernels).

struct AttentionRow {
  t: u32,    // position of the row within its sequence
  bh: u32,   // b·NH + h
  C: u32,    // NH·HS, the stride of one position
  x: u32,    // offset of (b, t, head h) in a [B, T, C] tensor
  kv: u32,   // offset of (b, 0, head h) in a [B, kvT, C] tensor; key t2 at kv + t2·C
}

fn attention_row(r: u32, T: u32, NH: u32, HS: u32, kvT: u32) -> AttentionRow {
  let t = r % T;
  let bh = r / T;
  let h = bh % NH;
  let b = bh / NH;
  let C = NH * HS;
  return AttentionRow(t, bh, C, (b * T + t) * C + h * HS, b * kvT * C + h * HS);
}
