// soa_fmu's player: window.soaPlay(scene) builds the scene written by soa_fmu/view/scene.py in
// MeshCat's viewer, and hands the keyframe tracks to MeshCat's animator (play/pause, time
// scrubber and speed in its Animations panel; orbit camera with the mouse).
window.soaPlay = function (scene) {
  "use strict";
  var THREE = MeshCat.THREE;

  function bytes(b64) {
    var s = atob(b64), u = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
    return u.buffer;
  }
  function f32(b64) { return new Float32Array(bytes(b64)); }
  function indices(m) { return m.wide ? new Uint32Array(bytes(m.indices)) : new Uint16Array(bytes(m.indices)); }

  var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
  var geometries = scene.meshes.map(function (m) {
    var g = new THREE.BufferGeometry();
    g.setAttribute("position", new THREE.BufferAttribute(f32(m.positions), 3));
    g.setIndex(new THREE.BufferAttribute(indices(m), 1));
    g.computeVertexNormals();
    return g;
  });
  var contactMaterials = [];
  function material(c, contact) {
    if (!contact) {
      return new THREE.MeshLambertMaterial({color: new THREE.Color(c[0], c[1], c[2]),
                                            opacity: c[3], transparent: c[3] < 1});
    }
    // contact geometry: translucent over the visuals (no depth writes; pulled towards the camera,
    // so a contact surface that coincides with a visual one wins), flat-shaded, its edges drawn
    var m = new THREE.MeshLambertMaterial({color: new THREE.Color(c[0], c[1], c[2]), opacity: c[3],
      transparent: true, depthWrite: false, flatShading: true, polygonOffset: true,
      polygonOffsetFactor: -1, polygonOffsetUnits: -4});
    m.userData.opacity = c[3];
    contactMaterials.push(m);
    return m;
  }
  function capsule(r, length) {             // along y, centred: a lathe of two quarter circles and a line
    var pts = [], n = 12;
    for (var i = 0; i <= n; i++) {
      var a = -Math.PI / 2 + (Math.PI / 2) * i / n;
      pts.push(new THREE.Vector2(r * Math.cos(a) + 1e-9, -length / 2 + r * Math.sin(a)));
    }
    for (i = 0; i <= n; i++) {
      a = (Math.PI / 2) * i / n;
      pts.push(new THREE.Vector2(r * Math.cos(a) + 1e-9, length / 2 + r * Math.sin(a)));
    }
    return new THREE.LatheGeometry(pts, 24);
  }
  function shape(it) {
    if (it.kind === "mesh") return geometries[it.mesh];
    if (it.kind === "box") return new THREE.BoxGeometry(it.size[0], it.size[1], it.size[2]);
    if (it.kind === "sphere") return new THREE.SphereGeometry(it.size[0], 24, 16);
    if (it.kind === "cylinder") return new THREE.CylinderGeometry(it.size[0], it.size[0], it.size[1], 20);
    if (it.kind === "capsule") return capsule(it.size[0], it.size[1]);
    return null;
  }
  function build(it) {
    var obj, g = shape(it);
    if (g !== null) {                          // cylinder, capsule: along y, centred
      obj = new THREE.Mesh(g, material(it.color, it.contact));
      if (it.contact) {
        var edges = new THREE.LineSegments(new THREE.EdgesGeometry(g, 25), new THREE.LineBasicMaterial(
          {color: new THREE.Color(it.color[0], it.color[1], it.color[2]), transparent: true,
           opacity: Math.min(1, 2 * it.color[3]), depthWrite: false}));
        edges.material.userData.opacity = edges.material.opacity;
        contactMaterials.push(edges.material);
        obj.add(edges);
      }
    } else if (it.kind === "axes") {
      obj = new THREE.AxesHelper(it.size[0]);
    } else if (it.kind === "arrow") {          // from the origin along y, length 1 (scaled per frame)
      obj = new THREE.Group();
      var shaft = new THREE.Mesh(new THREE.CylinderGeometry(it.size[0], it.size[0], 0.8, 12), material(it.color));
      shaft.position.y = 0.4;
      var head = new THREE.Mesh(new THREE.ConeGeometry(2.5 * it.size[0], 0.2, 16), material(it.color));
      head.position.y = 0.9;
      obj.add(shaft, head);
    }
    obj.matrix.fromArray(it.matrix);
    obj.matrix.decompose(obj.position, obj.quaternion, obj.scale);
    return obj;
  }

  var times = f32(scene.times);
  var animations = [];
  scene.nodes.forEach(function (node) {
    var path = ["soa", node.group, node.name];
    var target = viewer.scene_tree.find(path).object;
    node.items.forEach(function (it) { target.add(build(it)); });
    if (node.still) {                          // one pose for the whole result
      var P = f32(node.position), Q = f32(node.quaternion);
      target.position.set(P[0], P[1], P[2]);
      target.quaternion.set(Q[0], Q[1], Q[2], Q[3]);
      if (node.scale) { var S = f32(node.scale); target.scale.set(S[0], S[1], S[2]); }
      return;
    }
    var tracks = [{name: ".position", type: "vector3", times: times, values: f32(node.position)},
                  {name: ".quaternion", type: "quaternion", times: times, values: f32(node.quaternion)}];
    if (node.scale) tracks.push({name: ".scale", type: "vector3", times: times, values: f32(node.scale)});
    animations.push({path: path, clip: {fps: 1, name: "default", tracks: tracks}});
  });

  // camera: the model's bounding box at t0 fills the view (a sphere of its half diagonal inside
  // the narrower of the two fields of view), seen from scene.camera.direction.  MeshCat's scene is
  // three.js' y-up world turned to z-up (world (x, y, z) -> three.js (x, z, -y)); its camera sits
  // in that y-up frame and OrbitControls' target is in it too
  var cam = scene.camera, c = cam.target, d = cam.direction;
  var vfov = viewer.camera.fov * Math.PI / 180;          // as MeshCat sizes its pane (set_3d_pane_size)
  var aspect = viewer.dom_element.offsetWidth / Math.max(window.innerHeight, 1);
  var fov = Math.min(vfov, 2 * Math.atan(Math.tan(vfov / 2) * aspect));
  var dist = cam.radius / Math.sin(fov / 2);
  var p = [c[0] + dist * d[0], c[1] + dist * d[1], c[2] + dist * d[2]];
  viewer.set_property(["Cameras", "default", "rotated", "<object>"], "position", [p[0], p[2], -p[1]]);
  viewer.controls.target.set(c[0], c[2], -c[1]);
  viewer.controls.update();
  // the floor grid, sized to the model, at the contact floor (or under the lowest point of the result)
  var g = cam.grid, grid = new THREE.GridHelper(g.cell * g.cells, g.cells);
  grid.rotateX(Math.PI / 2);
  viewer.set_object(["Grid"], grid);
  viewer.set_transform(["Grid"], [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, g.centre[0], g.centre[1], g.centre[2], 1]);

  if (animations.length === 0 && scene.duration > 0) {   // nothing moves: the clock still runs
    animations.push({path: ["soa"], clip: {fps: 1, name: "default", tracks: [{name: ".position",
      type: "vector3", times: [0, scene.duration], values: [0, 0, 0, 0, 0, 0]}]}});
  }
  viewer.set_animation(animations, {play: scene.duration > 0, loopMode: THREE.LoopRepeat,
                                    repetitions: Infinity});
  var animator = viewer.animator;
  if (contactMaterials.length) {   // the contact geometry (group "contact"): a toggle, its opacity
    var contact = viewer.scene_tree.find(["soa", "contact"]), a0 = scene.contact_opacity;
    viewer.set_control("contact geometry", function (on) {
      contact.object.visible = on;
      if (contact.vis_controller) contact.vis_controller.updateDisplay();   // (its Scene checkbox)
      viewer.set_dirty();
    }, true);
    viewer.set_control("contact opacity", function (a) {
      contactMaterials.forEach(function (m) { m.opacity = Math.min(1, m.userData.opacity * a / a0); });
      viewer.set_dirty();
    }, a0, 0.0, 1.0, 0.05);
  }
  viewer.gui.close();             // the controls (Animations: play, pause, time, speed) start closed
  if (scene.duration === 0) animator.seek(0);

  var clock = document.getElementById("soa-clock");
  function tick() {
    var t = animator.actions.length ? animator.actions[0].time : 0;
    clock.textContent = "t = " + (scene.t0 + t).toFixed(3) + " s   speed " +
      animator.mixer.timeScale.toFixed(2) + (animator.playing ? "" : "   (paused)");
    requestAnimationFrame(tick);
  }
  tick();

  // for scripts and tests: the viewer, and seeking by result time
  window.soaView = {
    viewer: viewer, t0: scene.t0, duration: scene.duration,
    time: function () { return scene.t0 + (animator.actions.length ? animator.actions[0].time : 0); },
    seek: function (t) { animator.seek(t - scene.t0); animator.display_progress(t - scene.t0); },
    play: function () { animator.play(); }, pause: function () { animator.pause(); }
  };
};
