/**
 * Gradients for the standard TensorFlow.js kernels.
 *
 * Why this file exists: the Node build of @tensorflow/tfjs-core registers no gradients at all
 * (the @tensorflow/tfjs umbrella package does that, and this project uses tfjs-core plus backends
 * only; the ESM gradient files inside tfjs-core cannot be imported from Node because of their
 * extensionless/directory imports). Without registrations `tf.grad`/`tf.variableGrads` fail on any
 * ordinary op, and the RL losses (ratios, clipping, KL) are written with ordinary ops.
 *
 * `registerMissingGradients()` registers, for each kernel below, a gradient only where none is
 * registered yet, so when tfjs-node (which loads the umbrella) is in use its own ones stand.
 * Every formula here is checked against finite differences in test/model/gradients.test.ts.
 *
 * The model's hot paths do not depend on these: they are custom-gradient ops (ops.ts).
 */
import * as tf from '@tensorflow/tfjs-core';

type Grad = tf.GradConfig;
type Attrs = tf.NamedAttrMap;

/** Sum `dy` over the axes along which `shape` was broadcast, then give it `shape`. */
function unbroadcast(dy: tf.Tensor, shape: number[]): tf.Tensor {
  const axes = tf.broadcast_util.getReductionAxes(shape, dy.shape);
  const reduced = axes.length > 0 ? tf.sum(dy, axes) : dy;
  return tf.reshape(reduced, shape);
}

function binary(kernelName: string, fa: (dy: tf.Tensor, a: tf.Tensor, b: tf.Tensor) => tf.Tensor, fb: (dy: tf.Tensor, a: tf.Tensor, b: tf.Tensor) => tf.Tensor): Grad {
  return {
    kernelName,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, saved) => {
      const [a, b] = saved;
      const d = dy as tf.Tensor;
      return { a: () => unbroadcast(fa(d, a, b), a.shape), b: () => unbroadcast(fb(d, a, b), b.shape) };
    },
  };
}

function unaryFromX(kernelName: string, f: (dy: tf.Tensor, x: tf.Tensor) => tf.Tensor): Grad {
  return { kernelName, inputsToSave: ['x'], gradFunc: (dy, [x]) => ({ x: () => f(dy as tf.Tensor, x) }) };
}

function unaryFromY(kernelName: string, f: (dy: tf.Tensor, y: tf.Tensor) => tf.Tensor): Grad {
  return { kernelName, outputsToSave: [true], gradFunc: (dy, [y]) => ({ x: () => f(dy as tf.Tensor, y) }) };
}

function zeroGrad(kernelName: string): Grad {
  return { kernelName, inputsToSave: ['x'], gradFunc: (_dy, [x]) => ({ x: () => tf.zerosLike(x) }) };
}

function keepDimsShape(shape: number[], axes: number[]): number[] {
  const out = shape.slice();
  for (const a of axes) out[a] = 1;
  return out;
}

const f32 = (t: tf.Tensor) => tf.cast(t, 'float32');

const GRADIENTS: Grad[] = [
  // Binary elementwise ops (with broadcasting).
  binary(tf.Add, (dy) => dy, (dy) => dy),
  binary(tf.Sub, (dy) => dy, (dy) => tf.neg(dy)),
  binary(tf.Multiply, (dy, _a, b) => tf.mul(dy, f32(b)), (dy, a) => tf.mul(dy, f32(a))),
  binary(tf.RealDiv, (dy, _a, b) => tf.div(dy, f32(b)), (dy, a, b) => tf.neg(tf.div(tf.mul(dy, f32(a)), tf.square(f32(b))))),
  binary(tf.Maximum, (dy, a, b) => tf.mul(dy, f32(tf.greaterEqual(a, b))), (dy, a, b) => tf.mul(dy, f32(tf.less(a, b)))),
  binary(tf.Minimum, (dy, a, b) => tf.mul(dy, f32(tf.lessEqual(a, b))), (dy, a, b) => tf.mul(dy, f32(tf.greater(a, b)))),
  binary(tf.SquaredDifference, (dy, a, b) => tf.mul(dy, tf.mul(2, tf.sub(a, b))), (dy, a, b) => tf.mul(dy, tf.mul(2, tf.sub(b, a)))),
  binary(
    tf.Pow,
    (dy, a, b) => tf.mul(dy, tf.mul(b, tf.pow(a, tf.sub(b, 1)))),
    // d(a^b)/db = a^b ln a, defined as 0 where a <= 0 (as TensorFlow does).
    (dy, a, b) => tf.mul(dy, tf.mul(tf.pow(a, b), tf.where(tf.greater(a, 0), tf.log(a), tf.zerosLike(a)))),
  ),
  {
    kernelName: tf.AddN,
    saveAllInputs: true,
    gradFunc: (dy, saved) => {
      const ds: Record<string, () => tf.Tensor> = {};
      saved.forEach((_t, i) => (ds[i] = () => tf.clone(dy as tf.Tensor)));
      return ds;
    },
  },

  // Unary elementwise ops.
  unaryFromX(tf.Neg, (dy) => tf.neg(dy)),
  unaryFromX(tf.Abs, (dy, x) => tf.mul(dy, tf.sign(f32(x)))),
  unaryFromY(tf.Exp, (dy, y) => tf.mul(dy, y)),
  unaryFromX(tf.Log, (dy, x) => tf.div(dy, f32(x))),
  unaryFromX(tf.Log1p, (dy, x) => tf.div(dy, tf.add(x, 1))),
  unaryFromX(tf.Sqrt, (dy, x) => tf.div(dy, tf.mul(2, tf.sqrt(f32(x))))),
  unaryFromX(tf.Rsqrt, (dy, x) => tf.div(dy, tf.mul(-2, tf.mul(x, tf.sqrt(x))))),
  unaryFromX(tf.Square, (dy, x) => tf.mul(dy, tf.mul(2, f32(x)))),
  unaryFromX(tf.Reciprocal, (dy, x) => tf.neg(tf.div(dy, tf.square(x)))),
  unaryFromY(tf.Sigmoid, (dy, y) => tf.mul(dy, tf.mul(y, tf.sub(1, y)))),
  unaryFromY(tf.Tanh, (dy, y) => tf.mul(dy, tf.sub(1, tf.square(y)))),
  unaryFromX(tf.Relu, (dy, x) => tf.mul(dy, tf.step(f32(x)))),
  unaryFromX(tf.Softplus, (dy, x) => tf.mul(dy, tf.sigmoid(x))),
  unaryFromX(tf.Elu, (dy, x) => tf.mul(dy, tf.where(tf.greater(x, 0), tf.onesLike(x), tf.exp(x)))),
  unaryFromX(tf.Identity, (dy) => tf.clone(dy)),
  unaryFromX(tf.Cast, (dy) => tf.clone(dy)),
  zeroGrad(tf.Step),
  zeroGrad(tf.Sign),
  zeroGrad(tf.Floor),
  zeroGrad(tf.Ceil),
  zeroGrad(tf.Round),
  zeroGrad(tf.ZerosLike),
  zeroGrad(tf.OnesLike),
  zeroGrad(tf.IsNan),
  zeroGrad(tf.IsInf),
  zeroGrad(tf.IsFinite),
  zeroGrad(tf.LogicalNot),
  ...[tf.ArgMax, tf.ArgMin].map(zeroGrad),
  // Comparisons and logical ops: piecewise constant in their inputs.
  ...[tf.Greater, tf.GreaterEqual, tf.Less, tf.LessEqual, tf.Equal, tf.NotEqual, tf.LogicalAnd, tf.LogicalOr].map(
    (kernelName): Grad => ({
      kernelName,
      inputsToSave: ['a', 'b'],
      gradFunc: (_dy, [a, b]) => ({ a: () => tf.zerosLike(a), b: () => tf.zerosLike(b) }),
    }),
  ),
  {
    kernelName: tf.ClipByValue,
    inputsToSave: ['x'],
    gradFunc: (dy, [x], attrs: Attrs) => {
      const { clipValueMin, clipValueMax } = attrs as unknown as { clipValueMin: number; clipValueMax: number };
      return { x: () => tf.where(tf.logicalAnd(tf.greaterEqual(x, clipValueMin), tf.lessEqual(x, clipValueMax)), dy as tf.Tensor, tf.zerosLike(dy as tf.Tensor)) };
    },
  },
  {
    kernelName: tf.Select,
    inputsToSave: ['condition'],
    gradFunc: (dy, [condition]) => {
      const d = dy as tf.Tensor;
      const c = tf.cast(condition, 'bool');
      return {
        condition: () => tf.cast(tf.zerosLike(condition), 'float32'),
        t: () => tf.where(c, d, tf.zerosLike(d)),
        e: () => tf.where(c, tf.zerosLike(d), d),
      };
    },
  },

  // Reductions.
  {
    kernelName: tf.Sum,
    inputsToSave: ['x'],
    gradFunc: (dy, [x], attrs: Attrs) => {
      const axes = tf.util.parseAxisParam(attrs.axis as number | number[], x.shape);
      return { x: () => tf.mul(tf.reshape(dy as tf.Tensor, keepDimsShape(x.shape, axes)), tf.ones(x.shape)) };
    },
  },
  {
    kernelName: tf.Mean,
    inputsToSave: ['x'],
    gradFunc: (dy, [x], attrs: Attrs) => {
      const axes = tf.util.parseAxisParam(attrs.axis as number | number[], x.shape);
      const count = axes.reduce((n, a) => n * x.shape[a], 1);
      return { x: () => tf.div(tf.mul(tf.reshape(dy as tf.Tensor, keepDimsShape(x.shape, axes)), tf.ones(x.shape)), count) };
    },
  },
  ...[tf.Max, tf.Min].map(
    (kernelName): Grad => ({
      kernelName,
      inputsToSave: ['x'],
      outputsToSave: [true],
      gradFunc: (dy, [x, y], attrs: Attrs) => {
        // The gradient flows to every element equal to the extreme value (as TensorFlow.js does).
        // Max names its axis attribute reductionIndices, Min names it axis.
        const axes = tf.util.parseAxisParam((attrs.reductionIndices ?? attrs.axis) as number | number[], x.shape);
        const shape = keepDimsShape(x.shape, axes);
        return { x: () => tf.mul(tf.reshape(dy as tf.Tensor, shape), f32(tf.equal(x, tf.reshape(y, shape)))) };
      },
    }),
  ),
  {
    kernelName: tf.Softmax,
    outputsToSave: [true],
    gradFunc: (dy, [y], attrs: Attrs) => {
      const dim = attrs.dim as number;
      const d = dy as tf.Tensor;
      return { logits: () => tf.mul(y, tf.sub(d, tf.sum(tf.mul(d, y), [dim], true))) };
    },
  },

  // Shape ops.
  { kernelName: tf.Reshape, inputsToSave: ['x'], gradFunc: (dy, [x]) => ({ x: () => tf.reshape(dy as tf.Tensor, x.shape) }) },
  { kernelName: tf.ExpandDims, inputsToSave: ['input'], gradFunc: (dy, [x]) => ({ input: () => tf.reshape(dy as tf.Tensor, x.shape) }) },
  {
    kernelName: tf.Transpose,
    gradFunc: (dy, _saved, attrs: Attrs) => {
      const perm = attrs.perm as number[];
      return { x: () => tf.transpose(dy as tf.Tensor, tf.backend_util.getUndoAxesPermutation(perm)) };
    },
  },
  {
    kernelName: tf.Slice,
    inputsToSave: ['x'],
    gradFunc: (dy, [x], attrs: Attrs) => {
      const [begin, size] = tf.slice_util.parseSliceParams(x, attrs.begin as number | number[], attrs.size as number | number[]);
      const paddings: Array<[number, number]> = x.shape.map((n, i) => [begin[i], n - begin[i] - size[i]]);
      return { x: () => tf.pad(dy as tf.Tensor, paddings) };
    },
  },
  {
    kernelName: tf.PadV2,
    inputsToSave: ['x'],
    gradFunc: (dy, [x], attrs: Attrs) => {
      const paddings = attrs.paddings as Array<[number, number]>;
      return { x: () => tf.slice(dy as tf.Tensor, paddings.map((p) => p[0]), x.shape) };
    },
  },
  {
    kernelName: tf.Concat,
    saveAllInputs: true,
    gradFunc: (dy, saved, attrs: Attrs) => {
      const shapes = saved.map((t) => t.shape);
      const axis = tf.util.parseAxisParam(attrs.axis as number, shapes[0])[0];
      const parts = tf.split(dy as tf.Tensor, shapes.map((s) => s[axis]), axis);
      const ds: Record<string, () => tf.Tensor> = {};
      parts.forEach((p, i) => (ds[i] = () => p));
      return ds;
    },
  },
  {
    kernelName: tf.Pack,
    saveAllInputs: true,
    gradFunc: (dy, _saved, attrs: Attrs) => {
      const parts = tf.unstack(dy as tf.Tensor, attrs.axis as number);
      const ds: Record<string, () => tf.Tensor> = {};
      parts.forEach((p, i) => (ds[i] = () => p));
      return ds;
    },
  },
  {
    kernelName: tf.Unpack,
    gradFunc: (dys, _saved, attrs: Attrs) => ({ value: () => tf.stack(dys as tf.Tensor[], attrs.axis as number) }),
  },
  {
    kernelName: tf.SplitV,
    gradFunc: (dys, _saved, attrs: Attrs) => ({ x: () => tf.concat(dys as tf.Tensor[], attrs.axis as number) }),
  },
  {
    kernelName: tf.Tile,
    inputsToSave: ['x'],
    gradFunc: (dy, [x], attrs: Attrs) => {
      // View dy as [reps0, n0, reps1, n1, …] and sum over the repetition axes.
      const reps = attrs.reps as number[];
      const split: number[] = [];
      x.shape.forEach((n, i) => split.push(reps[i], n));
      const repAxes = x.shape.map((_n, i) => 2 * i);
      return { x: () => tf.reshape(tf.sum(tf.reshape(dy as tf.Tensor, split), repAxes), x.shape) };
    },
  },
  {
    kernelName: tf.GatherV2,
    inputsToSave: ['x', 'indices'],
    gradFunc: (dy, [x, indices], attrs: Attrs) => {
      if ((attrs.batchDims as number) > 0) throw new Error('gradient of gather with batchDims > 0 is not registered');
      const axis = tf.util.parseAxisParam(attrs.axis as number, x.shape)[0];
      return {
        x: () => {
          // Move the gathered axis first, scatter-add rows with unsortedSegmentSum, move it back.
          const outer = x.shape.slice(0, axis);
          const inner = x.shape.slice(axis + 1);
          const values = tf.reshape(dy as tf.Tensor, [...outer, indices.size, ...inner]);
          const perm = [outer.length, ...outer.map((_n, i) => i), ...inner.map((_n, i) => outer.length + 1 + i)];
          const summed = tf.unsortedSegmentSum(tf.transpose(values, perm), tf.reshape(indices, [indices.size]) as tf.Tensor1D, x.shape[axis]);
          return tf.transpose(summed, tf.backend_util.getUndoAxesPermutation(perm));
        },
        indices: () => tf.zerosLike(indices),
      };
    },
  },

  // Linear algebra.
  {
    kernelName: tf.BatchMatMul,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, [a, b], attrs: Attrs) => {
      const { transposeA, transposeB } = attrs as unknown as { transposeA: boolean; transposeB: boolean };
      const d = dy as tf.Tensor;
      let da: () => tf.Tensor;
      let db: () => tf.Tensor;
      if (!transposeA && !transposeB) {
        da = () => tf.matMul(d, b, false, true);
        db = () => tf.matMul(a, d, true, false);
      } else if (!transposeA && transposeB) {
        da = () => tf.matMul(d, b, false, false);
        db = () => tf.matMul(d, a, true, false);
      } else if (transposeA && !transposeB) {
        da = () => tf.matMul(b, d, false, true);
        db = () => tf.matMul(a, d, false, false);
      } else {
        da = () => tf.matMul(b, d, true, true);
        db = () => tf.matMul(d, a, true, true);
      }
      // Batch dimensions may have been broadcast.
      return { a: () => unbroadcastBatch(da(), a.shape), b: () => unbroadcastBatch(db(), b.shape) };
    },
  },
];

function unbroadcastBatch(g: tf.Tensor, shape: number[]): tf.Tensor {
  if (g.rank === shape.length && g.shape.every((n, i) => n === shape[i])) return g;
  const lead = g.rank - shape.length;
  const padded = [...new Array<number>(lead).fill(1), ...shape];
  const axes: number[] = [];
  for (let i = 0; i < g.rank - 2; i++) if (padded[i] === 1 && g.shape[i] !== 1) axes.push(i);
  return tf.reshape(axes.length ? tf.sum(g, axes) : g, shape);
}

let registered = false;

/** Register a gradient for every kernel above that has none yet. Idempotent. */
export function registerMissingGradients(): void {
  if (registered) return;
  registered = true;
  for (const g of GRADIENTS) {
    if (!tf.getGradient(g.kernelName)) tf.registerGradient(g);
  }
}

/** Kernel names this module can supply gradients for (for `marsrl doctor` and tests). */
export const GRADIENT_KERNELS: readonly string[] = GRADIENTS.map((g) => g.kernelName);
